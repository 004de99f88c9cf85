"""The built-in tools, grouped by family; each public module registers one atomic toolset with ``register(registry)``.

- ``files``: read_file, write_file, patch, search_files
- ``execution``: terminal, process, execute_code
- ``web``: web search and extract, the browser, vision
- ``services``: media generation, speech, messaging and platform services (Discord, Home Assistant, Feishu)
- ``work``: todo, memory, session search, clarify, skills, kanban, cron jobs, sub-agents

Heavy imports stay inside handlers, so importing a module is cheap.
"""
