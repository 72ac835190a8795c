"""Text games for language models: Wordle, Sokoban and Connect Four (see README.md)."""
