# The benchmark-point image: AIPerf in its own environment plus the stdlib-only point runner and AIPerf contract.
FROM python:3.11-slim
# images/aiperf.lock.txt pins every package AIPerf pulls in (scripts/lock_images.py), not only aiperf itself.
COPY images/aiperf.requirements.txt images/aiperf.lock.txt /tmp/
RUN pip install --no-cache-dir -r /tmp/aiperf.requirements.txt -c /tmp/aiperf.lock.txt && useradd --uid 1000 --create-home infersweep
# The AIPerf contract, the point runner and the steps' parsers (standard library only; their parsers follow
# from their declarations), the one step runner and the two steps that use them; tests/aiperf/test_aiperf_contract.py and
# tests/steps/test_step_declarations.py run them with only these files.
COPY infersweep/__init__.py infersweep/errors.py infersweep/step_interface.py infersweep/step_declarations.py /opt/infersweep/infersweep/
COPY infersweep/aiperf/__init__.py infersweep/aiperf/flags.py infersweep/aiperf/artifacts.py infersweep/aiperf/point.py infersweep/aiperf/point_run.py infersweep/aiperf/adaptive.py infersweep/aiperf/steadiness.py infersweep/aiperf/server_export.py infersweep/aiperf/phase_overlap.py infersweep/aiperf/student_t.py /opt/infersweep/infersweep/aiperf/
COPY steps/__init__.py steps/runner.py steps/transient.py steps/aiperf_point.py steps/aiperf_results.py /opt/infersweep/steps/
ENV PYTHONPATH=/opt/infersweep PYTHONUNBUFFERED=1
USER 1000
