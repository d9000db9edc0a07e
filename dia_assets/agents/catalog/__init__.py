"""Semantic catalog (Data Agents §III-A): build the label tree, store and search it in the
shared memory, and estimate semantic operators' selectivity from it."""
