"""What rules ask of a file's libcst tree: its context, imports, what is heavy and how much it weighs, what a value holds, hooks, containers; and the Rule base."""
