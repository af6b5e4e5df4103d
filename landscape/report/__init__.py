"""The scorecard of a batch-size study: which runs (``runs``), what is measured for each
(``measures``), the statistics (``stats``), the scorecard and its verdict (``scorecard``) and its
tables (``tables``).  Nothing here knows about ranks: ``landscape report`` shares the runs out."""
