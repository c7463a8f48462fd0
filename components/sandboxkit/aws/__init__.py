"""AWS target: Lambda MicroVM launcher, in-guest worker and the Pulumi component."""
