"""What a run shows and leaves behind: collector (gathered in the controller) · table (the
end-of-run verdict table) · plots · plan (``--llm-plan``: what a suite would do)."""
