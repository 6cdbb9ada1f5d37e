# The benchmark-point image: AIPerf in its own environment plus the stdlib-only point runner and AIPerf contract.
FROM python:3.11-slim
COPY images/aiperf.requirements.txt /tmp/requirements.txt
RUN pip install --no-cache-dir -r /tmp/requirements.txt && useradd --uid 1000 --create-home infersweep
# The AIPerf contract (standard library only) and the two steps that use it; tests/test_aiperf_contract.py
# runs them with only these files.
COPY infersweep/__init__.py infersweep/aiperf_contract.py /opt/infersweep/infersweep/
COPY steps/__init__.py steps/aiperf_point.py steps/aiperf_results.py steps/outputs.py /opt/infersweep/steps/
ENV PYTHONPATH=/opt/infersweep PYTHONUNBUFFERED=1
USER 1000
