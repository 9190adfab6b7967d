"""The applications users run: experiments, sweeps, the demo, TPC-H, sim-vs-live, reports, trace
import, the policy ranking and the testbed command. The top layer: it may import every other
package; nothing imports it."""
