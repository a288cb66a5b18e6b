"""The mirror store: bare git mirrors on local disk, and everything gad-bot reads from git through pygit2.

pygit2 lives in this package and nowhere else. A mirror fetches every ref (`+refs/*:refs/*`) with prune, so it
follows upstream exactly: deleted refs disappear, rewound branches move back. One job a module, lowest first:
dirs (a mirror's directory name, opening it, error words without its path), remote (credentials, limits and
progress of a fetch's connections), failures (what a failed fetch's words mean), refs, commits, trees, mailmap,
health (one mirror's loose objects and stale locks), localcopy (local sources: hard links instead of a fetch),
fetch (libgit2's fetch in this process), fetchchild (that fetch in a forked child, killed at its deadline),
mirror (`Mirror`: one repository, a facade over the above), leftovers (the sweep), clones (`MirrorStore`: the
directory of mirrors, new clones, removal). Nothing is imported here: each caller imports the module whose job
it needs, and pays for no other.
"""
