"""Drop-in session backends for agent frameworks. Each module imports its framework, so it can
be imported only where that framework is installed (`pip install 'sessionstore[<extra>]'`)."""
