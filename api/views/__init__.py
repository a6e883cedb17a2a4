"""What the API answers with: each view built from what the core gives (the rows of its statements, its configs
and results), in the contract's shapes. REST encodes them as JSON; gRPC builds its own messages from the same rows.
One module per part of the API, as `api.routes`."""
