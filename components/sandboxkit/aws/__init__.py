"""AWS target of sandboxkit: Lambda MicroVM launcher, in-guest worker and Pulumi component."""
