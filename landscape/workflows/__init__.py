"""Commands made of commands: the demo and the batch-size study (train, measure, compare, draw)."""
