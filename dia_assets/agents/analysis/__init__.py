"""SQL + semantic-operator pipelines (Data Agents §III-C, §IV-A): the Query Generator plans
steps, each step's result is a table, the final SQL is verified against the contract."""
