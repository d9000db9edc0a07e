"""The platform under the agents: what every agent needs (model access, settings), each in one
home. It imports no Dagster and no agent module, so agents can depend on it without cycles."""
