"""Web tools: search and extract, the browser and vision."""
