"""Weekly digests: subscriptions, their typed rows and blocks, the deliverer, the face of the digest commands, the scheduler.

Imports bot/render/, bot/engine/, bot/store/ and the modules directly in bot/.
"""
