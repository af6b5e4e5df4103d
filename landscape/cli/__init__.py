"""Command-line programs under the one ``landscape`` command (``cli.main``); each ``main`` runs inside
the one error boundary (``cli.boundary``)."""
