"""The reproduction pipelines: one script per benchmark, installed as ``pyterrier_instruct.pipelines`` and run as
``pyterrier-instruct <command>`` (see :data:`pyterrier_instruct.cli.COMMANDS`) or ``python pipelines/<script>.py``."""
