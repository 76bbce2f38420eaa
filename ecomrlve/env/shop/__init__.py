"""The shop: its products (`products.Catalog`, with `search` and `columns`), its state (orders,
carts, stock: `state.WorldState`) and the tools an agent calls on them (`tools.ShopTools`), each
declared with the goal milestones a call of it reaches (`milestones`).

The bottom of `ecomrlve.env`: nothing here knows of episodes, events or verdicts.
"""
