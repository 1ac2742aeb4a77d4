"""Built-in stage types. Each module holds one Stage subclass with its parameter schema beside it."""
