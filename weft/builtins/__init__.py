"""The builtin library as data: each builtin declared once (name, overloads, type rule, host
implementation), one module per family (scalar, vector, constructors, random, library)."""
