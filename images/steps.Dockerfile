# The step image: every workflow step except benchmark points runs `python -m steps.<module>` from here.
FROM python:3.11-slim
WORKDIR /opt/infersweep
# git: the UI launcher's render step fetches a recipe from Git at a pinned commit (infersweep/launcher/git_source.py);
# openssh-client for ssh:// and git@host:path repositories (git only Recommends it, which --no-install-recommends drops)
RUN apt-get update && apt-get install -y --no-install-recommends git openssh-client && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md images/steps.lock.txt ./
COPY infersweep ./infersweep
COPY workflows ./workflows
COPY steps ./steps
COPY params ./params
# steps.lock.txt pins every package pyproject.toml's ranges resolve to (scripts/lock_images.py): a rebuild
# installs what was tested, not what is newest that day.
RUN pip install --no-cache-dir -c steps.lock.txt . && useradd --uid 1000 --create-home infersweep
ENV INFERSWEEP_PARAMS=/opt/infersweep/params PYTHONUNBUFFERED=1
USER 1000
