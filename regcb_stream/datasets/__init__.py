"""The public streams (UCI sets as bandit problems), logged VW streams made of them, and
a realizable synthetic problem."""
