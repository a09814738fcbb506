"""Where the app's sessions come from: the live store, a recorded transcript, or memory.
Each is a `SessionSource` (base.py): data in, actions out."""
