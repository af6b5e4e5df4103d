"""Command-line programs: plot_surface, plot_1d, plot_2d. Each ``main`` runs inside ``boundary.run``."""
