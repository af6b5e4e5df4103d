"""The scorecard of a batch-size study: which runs (``runs``), what is measured for each
(``measures``), the tests (``stats``: permutation within seeds, Friedman, Holm), the size of a
difference and the smallest one the seeds could see (``effects``), networks compared at different
training losses (``matching``), the scorecard and its test records (``scorecard``), its verdict in
words (``verdict``), its tables (``tables``) and figure (``figures``).  Nothing here knows about ranks:
``landscape report`` shares the runs out."""
