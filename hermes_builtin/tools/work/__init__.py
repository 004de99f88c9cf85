"""Tools for the agent's own work: todo, memory, session search, clarify, skills, kanban, cron jobs, sub-agents."""
