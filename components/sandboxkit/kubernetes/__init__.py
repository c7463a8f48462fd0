"""Target ``kubernetes``: agent-sandbox objects on any cluster running its controller."""
