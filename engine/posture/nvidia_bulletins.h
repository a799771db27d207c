/* The first fixed versions of NVIDIA's security bulletins, one row per CVE
 * and branch. This is data: a new bulletin is one row here (and a test case
 * when it brings a new shape). vigil compares the node's driver and NVIDIA
 * Container Toolkit versions against it (engine/posture/bulletins.h).
 *
 *   X(bulletin, "CVE", "component", "branch", "first fixed", "source")
 *
 *   bulletin   NVIDIA's bulletin number (nvidia.custhelp.com a_id)
 *   component  "driver" (the Linux kernel module, /proc/driver/nvidia/version)
 *              or "toolkit" (the NVIDIA Container Toolkit package)
 *   branch     the driver branch the row is about (the version's first
 *              number: "460"); "" when the row holds for every version
 *   first fixed  the first version of that branch with the fix
 *   source     where the row comes from
 *
 * How a driver branch the bulletin does not list is judged: older than a
 * branch the bulletin fixed, it got no fix (vulnerable); newer than every
 * branch it lists, it came after the fix (not vulnerable).
 */
#ifndef VIGIL_ENGINE_POSTURE_NVIDIA_BULLETINS_H
#define VIGIL_ENGINE_POSTURE_NVIDIA_BULLETINS_H

#define VG_NVIDIA_BULLETINS(X)                                                                                   \
  /* Container Toolkit: mount-path TOCTOU, legacy mode (Wiz). */                                                 \
  X(5582, "CVE-2024-0132", "toolkit", "", "1.16.2", "https://nvidia.custhelp.com/app/answers/detail/a_id/5582")  \
  X(5582, "CVE-2024-0133", "toolkit", "", "1.16.2", "https://nvidia.custhelp.com/app/answers/detail/a_id/5582")  \
  /* Container Toolkit: the bypass of the CVE-2024-0132 fix. */                                                  \
  X(5616, "CVE-2025-23359", "toolkit", "", "1.17.4", "https://nvidia.custhelp.com/app/answers/detail/a_id/5616") \
  /* Container Toolkit: NVIDIAScape (enable-cuda-compat hook runs the image's LD_PRELOAD). */                    \
  X(5659, "CVE-2025-23266", "toolkit", "", "1.17.8", "https://nvidia.custhelp.com/app/answers/detail/a_id/5659") \
  /* Container Toolkit: update-ldcache follows links. */                                                         \
  X(5659, "CVE-2025-23267", "toolkit", "", "1.17.8", "https://nvidia.custhelp.com/app/answers/detail/a_id/5659") \
  /* Container Toolkit: hook TOCTOU, affected up to 1.19.0. */                                                   \
  X(5850, "CVE-2026-24260", "toolkit", "", "1.19.1", "https://nvidia.custhelp.com/app/answers/detail/a_id/5850") \
  /* Driver: device isolation (mknod of NVIDIA nodes in a container reaches every GPU). */                       \
  X(5142, "CVE-2021-1056", "driver", "460", "460.32.03",                                                         \
    "https://nvidia.custhelp.com/app/answers/detail/a_id/5142 (versions unchecked)")                             \
  X(5142, "CVE-2021-1056", "driver", "450", "450.102.04",                                                        \
    "https://nvidia.custhelp.com/app/answers/detail/a_id/5142 (versions unchecked)")                             \
  X(5142, "CVE-2021-1056", "driver", "418", "418.181.07",                                                        \
    "https://nvidia.custhelp.com/app/answers/detail/a_id/5142 (versions unchecked)")                             \
  X(5142, "CVE-2021-1056", "driver", "390", "390.141",                                                           \
    "https://nvidia.custhelp.com/app/answers/detail/a_id/5142 (versions unchecked)")

#endif /* VIGIL_ENGINE_POSTURE_NVIDIA_BULLETINS_H */
