"""git and SQLite: the mirror store (pygit2, the git binary) and the index (SQLite, arrays).

The lowest floor but one: it imports only the modules directly in bot/.
"""
