"""The studies' baselines our algorithms are compared against."""
