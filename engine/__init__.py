"""The engine: loads a run, asks the domain what is next, performs it through a port, records."""
