"""Persistence: the eventsourcing library's recorders, configured by CONTROLROOM_STORE."""
