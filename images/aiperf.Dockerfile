# The benchmark-point image: AIPerf in its own environment plus the stdlib-only point runner.
FROM python:3.11-slim
COPY images/aiperf.requirements.txt /tmp/requirements.txt
RUN pip install --no-cache-dir -r /tmp/requirements.txt && useradd --uid 1000 --create-home infersweep
COPY steps/__init__.py steps/aiperf_point.py steps/aiperf_results.py /opt/infersweep/steps/
# the steps' parsers follow from their declarations (standard library only)
COPY infersweep/__init__.py infersweep/step_interface.py infersweep/step_declarations.py /opt/infersweep/infersweep/
ENV PYTHONPATH=/opt/infersweep PYTHONUNBUFFERED=1
USER 1000
