"""envkernel-kit: the plugin author's kit.

What several plugins share, so that no plugin imports another plugin:

- :mod:`envkernel_kit.naming`: the API vocabulary (words, singular and plural, verbs, id names);
- :mod:`envkernel_kit.argsgen`: JSON Schema types and argument generation for tool calls;
- :mod:`envkernel_kit.tools`: :func:`~envkernel_kit.tools.classify_tools`, what each tool of an
  environment does (from its resource model, else from its names);
- :mod:`envkernel_kit.messages`: OpenAI chat-message helpers for policies;
- :mod:`envkernel_kit.chat`: :class:`~envkernel_kit.chat.ChatClient`, one Chat Completions call with
  one retry layer (needs the ``envkernel-kit[openai]`` extra; ``openai`` is imported on first use),
  and :class:`~envkernel_kit.chat.ChatSettings`, the model-server settings every component that
  calls a model subclasses;
- :mod:`envkernel_kit.sink`: an idempotent JSON-lines sink for trainers and exporters;
- :mod:`envkernel_kit.groups`: scored groups: purpose and GRPO advantages;
- :mod:`envkernel_kit.scoring`: the trace + outcome reward as pure functions (the ``traceoutcome``
  reward model and ``envkernel serve`` score with it);
- :mod:`envkernel_kit.grading`: the one grading entry point every reward model and ``envkernel
  serve`` use: a task's kind (check script, state, answer) decides once whether it is graded in a
  sandbox or in process;
- :mod:`envkernel_kit.checks`: one conformance check per role (``check_reward_model(...)``, ...);
- :mod:`envkernel_kit.testing` and :mod:`envkernel_kit.scripted`: test doubles (a run-like
  context, an in-memory sandbox, a scripted OpenAI-compatible server);
- :mod:`envkernel_kit.pytest_plugin`: pytest fixtures, loaded through the ``pytest11`` entry point.

Importing this package imports none of them.
"""
