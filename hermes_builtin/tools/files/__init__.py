"""File tools: read_file, write_file, patch and search_files."""
