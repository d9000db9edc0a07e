"""Semantic operators with a cost cascade (Data Agents §III-B): sem_filter, sem_extract,
sem_group and sem_join over warehouse columns, each deciding a row by embedding search,
threshold pruning, a light model, then a strong model, and recording which stage decided."""
