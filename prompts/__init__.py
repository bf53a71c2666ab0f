"""The prompt registry (`prompts.json`) and its template files, with tier variants."""
