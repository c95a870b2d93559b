"""The HTTP side of talking to a server: native /generate, chat, greedy completions with
logprobs, and streamed requests measured into records."""
