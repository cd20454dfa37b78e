"""The GPU's SM clock and power-limit state while a case is timed, as fixtures/gpu_power.*: NVML
(libnvidia-ml, loaded at run time through ctypes) sampled on a thread every 20 ms and once at
each end, the device matched to CUDA's by PCI bus id. Counters, on a CUDA run only:
  sm_clock_mhz      mean SM clock over the samples
  power_capped_pct  share of the samples during which the power limit held the clock down"""
import ctypes
import threading

SW_POWER_CAP, HW_POWER_BRAKE = 0x4, 0x80  # NVML clock event reasons
NVML_CLOCK_SM = 1

_nvml = None


def _load():
    """The NVML library with nvmlInit done, or None (no driver, a CPU machine)."""
    global _nvml
    if _nvml is None:
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            reasons = getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                lib.nvmlDeviceGetCurrentClocksThrottleReasons  # drivers before 535
            ok = lib.nvmlInit_v2() == 0
            _nvml = (lib, reasons) if ok else False
        except (OSError, AttributeError):
            _nvml = False
    return _nvml or None


def power_counters(samples):
    """{sm_clock_mhz, power_capped_pct} of [(mhz, reasons)]; {} when there is no sample."""
    if not samples:
        return {}
    capped = sum(1 for _, r in samples if r & (SW_POWER_CAP | HW_POWER_BRAKE))
    return {"sm_clock_mhz": sum(m for m, _ in samples) / len(samples),
            "power_capped_pct": 100.0 * capped / len(samples)}


def _nvml_device(pci_bus_id):
    nvml = _load()
    if nvml is None or not pci_bus_id:
        return None
    handle = ctypes.c_void_p()
    if nvml[0].nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(handle)) != 0:
        return None
    return handle


def _read(handle):
    lib, reasons_fn = _nvml
    mhz, reasons = ctypes.c_uint(), ctypes.c_ulonglong()
    if lib.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_SM, ctypes.byref(mhz)) != 0 or \
            reasons_fn(handle, ctypes.byref(reasons)) != 0:
        return None
    return float(mhz.value), int(reasons.value)


def cuda_pci_bus_id(device):
    """The PCI bus id of a torch CUDA device ("" for another device or an older PyTorch)."""
    if device.type != "cuda":
        return ""
    import torch
    props = torch.cuda.get_device_properties(
        device.index if device.index is not None else torch.cuda.current_device())
    if not hasattr(props, "pci_bus_id"):
        return ""
    return f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"


class PowerSampler:
    """Samples the NVML device of `pci_bus_id` from construction until stop() (or the end of a
    `with` block); samples nothing where NVML or the device cannot be read."""

    def __init__(self, pci_bus_id, period_s=0.02):
        self.handle, self.period_s, self.samples = _nvml_device(pci_bus_id), period_s, []
        self._stop = threading.Event()
        self._thread = None
        if self.handle is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def _run(self):
        while True:
            s = _read(self.handle)
            if s is not None:
                self.samples.append(s)
            if self._stop.is_set():
                return
            self._stop.wait(self.period_s)

    def stop(self):
        """The samples (the thread takes its last one before it ends)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        return self.samples

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
