package scale
