"""Control Room: durable, auditable multi-agent LLM runs on an event store.

The card's folders (`domain/`, `engine/`, `api/`, ...) stay at the repository's top level;
they are installed and imported as subpackages of this one namespace, so the distribution
claims no generic top-level names (`api`, `models`, `tools`) in a user's environment.
"""

__version__ = "0.2.0"
