// The tilelang._C extension: one init function per concept, defined in the other
// files of this folder, and the translation of C++ errors into Python exceptions.
#include <nanobind/nanobind.h>

#include <typeinfo>

#include <cstdlib>
#include <string>

#include "support/env_switch.h"
#include "support/error.h"
#include "support/logging.h"
#include "tl/device_dir.h"

namespace nb = nanobind;

void bind_dtype(nb::module_& m);
void bind_ir(nb::module_& m);
void bind_builder(nb::module_& m);
void bind_runtime(nb::module_& m);

NB_MODULE(_C, m) {
  m.doc() = "tilelang-cpp compiler core";
  // Kernels held by module-level caches (tilelang.jit, a script's globals) can outlive
  // nanobind's shutdown check, which then prints "leaked N instances" at every exit of
  // such a script. The check is for binding bugs: TILELANG_NB_LEAK_WARNINGS=1 keeps it. A
  // value that is neither on nor off is a warning (an import does not fail over it).
  bool leak_warnings = false;
  try {
    leak_warnings = tl::env_switch("TILELANG_NB_LEAK_WARNINGS") == tl::EnvSwitch::On;
  } catch (const tl::UserError& e) {
    tl::log(tl::LogLevel::Warning, std::string(e.what()) + "; the leak warnings stay off");
  }
  nb::set_leak_warnings(leak_warnings);
  static nb::object user_error_type =
      nb::borrow(PyErr_NewException("tilelang._C.TileLangError", PyExc_ValueError, nullptr));
  static nb::object internal_error_type =
      nb::borrow(PyErr_NewException("tilelang._C.InternalError", PyExc_RuntimeError, nullptr));
  static nb::object assumption_error_type = nb::borrow(PyErr_NewException(
      "tilelang._C.AssumptionError", nb::make_tuple(user_error_type, nb::handle(PyExc_RuntimeError)).ptr(), nullptr));
  m.attr("TileLangError") = user_error_type;
  m.attr("AssumptionError") = assumption_error_type;
  m.attr("InternalError") = internal_error_type;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const tl::DeviceDirError& e) {
      // A RuntimeError in Python, as before it became an EnvironmentError (a UserError)
      // in C++: tilelang.doctor and users' code catch it as one.
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const tl::UserError& e) {
      const nb::object& type = dynamic_cast<const tl::AssumptionError*>(&e) ? assumption_error_type : user_error_type;
      nb::object exc = type(nb::str(e.what()));
      exc.attr("file") = e.span().file ? nb::object(nb::str(e.span().file)) : nb::none();
      exc.attr("line") = e.span().line;
      exc.attr("bare_message") = nb::str(e.bare_message().c_str());
      PyErr_SetObject(type.ptr(), exc.ptr());
    } catch (const tl::InternalError& e) {
      PyErr_SetString(internal_error_type.ptr(), e.what());
    } catch (const std::bad_cast&) {
      // A Python value of a type or size the core cannot take reached a conversion the
      // bindings do not check themselves: a user error, not a bare "std::bad_cast".
      nb::object exc = user_error_type(
          nb::str("a value given to TileLang has a type or size it cannot take here (e.g. a float where an "
                  "integer is expected, or an integer beyond 64 bits)"));
      exc.attr("file") = nb::none();
      exc.attr("line") = 0;
      exc.attr("bare_message") = exc.attr("args")[0];
      PyErr_SetObject(user_error_type.ptr(), exc.ptr());
    }
  });
  bind_dtype(m);
  bind_ir(m);
  bind_builder(m);
  bind_runtime(m);
}
