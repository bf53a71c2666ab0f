"""Read models built only from events. GET endpoints and CLI views read these."""
