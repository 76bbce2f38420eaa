"""What happens to the shop during one episode: the record of every tool call and what it
changed (`record.EpisodeRecord`), and the world's own events (`events`: a stock-out, a price
change, a late delivery) played at their turn.

Above `shop`, below `judge` (the verifier reads the record and the events).
"""
