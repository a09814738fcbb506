"""The embedded default: a demo workspace, the simulated agent that writes to it, and the
scripted workload both use."""
