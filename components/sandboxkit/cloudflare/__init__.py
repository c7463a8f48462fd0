"""Target ``cloudflare``: a Worker routes each sandbox to a Durable Object owning one container."""
