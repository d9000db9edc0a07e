"""Model access, one door for the whole project.

- `base`: the model protocol (`ChatFn`) and its reply (`Reply`, `ToolCall`);
- `litellm`: the only module that imports litellm (lazily): the Router door, completions,
  embeddings, tool-calling chat, pricing, scripted providers;
- `usage`: the one token, cost and latency record;
- `scripted`: `ScriptedModel`, the turn-by-turn model of tests, benches, the eval oracle and
  the security harness;
- `errors`: one-line model errors; `doctor`: `dia doctor`'s check of each configured model.

Nothing is imported here, so `import dia_assets.platform.model.base` stays free of litellm."""
