"""Walkers before the declared schemas, kept to compare against."""
