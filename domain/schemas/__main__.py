"""Write the packet and receipt JSON Schemas next to this file."""

from controlroom.domain.schemas import HERE, rendered

for name, text in rendered().items():
    (HERE / name).write_text(text, encoding="utf-8")
    print(f"wrote {HERE / name}")
