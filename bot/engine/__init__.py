"""The metric over the index: the command grammar, periods, filters, refs, organizations, COCOMO, and the engine that answers.

Imports bot/store/ and the modules directly in bot/, never a higher floor.
"""
