"""`emit dev`: the whole service on one machine, through the handlers AWS runs."""
