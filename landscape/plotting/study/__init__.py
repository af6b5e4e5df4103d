"""The batch-size study's figures, drawn from a scorecard (``report.scorecard``) and the runs' records:
measures by batch size (``by_batch``), the gap against each measure (``gap``), surfaces and spectra of
representative networks (``surfaces``), and the one-page summary (``summary``)."""
