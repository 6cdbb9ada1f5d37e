"""The tests mirror the packages: tests/<area>/ holds the tests of infersweep/<area>/ (or steps/, workflows/),
tests/house/ the rules of the whole house, tests/support/ the stand-ins and helpers the tests share. A package,
so each test module is imported by its dotted name (tests.results.test_validity) and basenames may repeat."""
