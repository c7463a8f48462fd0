"""AWS target of sandboxkit: Lambda MicroVM launcher, in-guest worker and (later) Pulumi component."""
