"""Model access: the one door (a litellm Router) and the check that it works (`dia doctor`)."""
