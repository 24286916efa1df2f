!> body_endpoint: the Fortran interface (ISO_C_BINDING) to interfaces/c/examples/body_endpoint.h,
!> the flexible side of one joint on rbcosim's own flexible body: a body file written by
!>
!>   rbcosim export-body SCENARIO --body NAME -o FILE.body
!>
!> loaded and stepped by the library rbcosim_flex (src/rbcosim/librbcosim/flex/body_file.h,
!> the kernels rbcosim's FlexBody and FlexEndpoint call), with the exchange in the order of each
!> coupling scheme (rbcosim.cosim.flex_endpoint.FlexEndpoint). Link with rbc_examples_endpoint.
!>
!> Arrays are passed as C sees them: a motion is 19 values (position m, quaternion, velocity
!> m/s, angular velocity rad/s, acceleration m/s^2, angular acceleration rad/s^2; inertial),
!> the node's kinematics 13, a wrench polynomial coeff(6, rows) (C's [rows][6]: column j is
!> the coefficient of tau^(j-1), N and N m per s^(j-1)), the added mass a 6 x 6 block in C
!> order (hand it to rbcf_set_added_mass unchanged).
module body_endpoint
  use, intrinsic :: iso_c_binding, only: c_ptr, c_int, c_long, c_double, c_char, c_size_t, &
                                         c_null_char, c_associated, c_f_pointer
  implicit none
  private
  public :: BE_JACOBI, BE_GS_RIGID_FIRST, BE_GS_FLEX_FIRST
  public :: bef_scheme_of, bef_open, be_close, be_scheme_in, be_has_reference, be_start, &
            be_report, be_polynomial, be_inputs, be_finish, be_wrench, bef_modal_state, be_time

  integer(c_int), parameter :: BE_JACOBI = 0, BE_GS_RIGID_FIRST = 1, BE_GS_FLEX_FIRST = 2

  interface
    integer(c_int) function be_scheme_of_c(name) bind(C, name="be_scheme_of")
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: name(*)
    end function be_scheme_of_c

    type(c_ptr) function be_open_c(path, scheme, order, h, micro_steps, reason, reason_size) &
        bind(C, name="be_open")
      import :: c_ptr, c_int, c_long, c_double, c_char, c_size_t
      character(kind=c_char), intent(in) :: path(*)
      integer(c_int), value :: scheme, order
      real(c_double), value :: h
      integer(c_long), value :: micro_steps
      character(kind=c_char), intent(out) :: reason(*)
      integer(c_size_t), value :: reason_size
    end function be_open_c

    !> Free the endpoint.
    subroutine be_close(ep) bind(C, name="be_close")
      import :: c_ptr
      type(c_ptr), value :: ep
    end subroutine be_close

    !> The endpoint's scheme (BE_*).
    integer(c_int) function be_scheme_in(ep) bind(C, name="be_scheme_in")
      import :: c_ptr, c_int
      type(c_ptr), value :: ep
    end function be_scheme_in

    !> 1 when the body file carries a grounded reference position.
    integer(c_int) function be_has_reference(ep) bind(C, name="be_has_reference")
      import :: c_ptr, c_int
      type(c_ptr), value :: ep
    end function be_has_reference

    !> Place the body at the rigid point's motion at t (s); with want_added_mass /= 0 returns 1
    !> and writes the added mass (6 x 6, C order, inertial axes) when the body has one, else 0.
    integer(c_int) function be_start(ep, t, motion, want_added_mass, added_mass) &
        bind(C, name="be_start")
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: ep
      real(c_double), value :: t
      real(c_double), intent(in) :: motion(19)
      integer(c_int), value :: want_added_mass
      real(c_double), intent(out) :: added_mass(36)
    end function be_start

    !> The interface node's kinematics (13) and the energy (J) delivered so far.
    subroutine be_report(ep, kinematics, energy) bind(C, name="be_report")
      import :: c_ptr, c_double
      type(c_ptr), value :: ep
      real(c_double), intent(out) :: kinematics(13), energy
    end subroutine be_report

    !> The polynomial through the past exchanged values only (the wrench to hold at the first
    !> report), coeff(6, rows) in tau = time - t; returns rows.
    integer(c_int) function be_polynomial(ep, t, coeff) bind(C, name="be_polynomial")
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: ep
      real(c_double), value :: t
      real(c_double), intent(out) :: coeff(6, 4)
    end function be_polynomial

    !> The wrench polynomial for [t, t + H] from the rigid motion at t: coeff(6, rows); returns
    !> rows, or -1 when the body's step (flexible side first) was not finite.
    integer(c_int) function be_inputs(ep, t, motion, coeff) bind(C, name="be_inputs")
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: ep
      real(c_double), value :: t
      real(c_double), intent(in) :: motion(19)
      real(c_double), intent(out) :: coeff(6, 4)
    end function be_inputs

    !> Complete the step from the motion at t (end: the rigid motion at t_end = t + H, used with
    !> the rigid side first, else ignored). 0, or -1 when the step was not finite.
    integer(c_int) function be_finish(ep, t, motion, t_end, end) bind(C, name="be_finish")
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: ep
      real(c_double), value :: t, t_end
      real(c_double), intent(in) :: motion(19), end(19)
    end function be_finish

    !> The body's wrench on the rigid body (6: N, N m, inertial) at its state.
    subroutine be_wrench(ep, wrench) bind(C, name="be_wrench")
      import :: c_ptr, c_double
      type(c_ptr), value :: ep
      real(c_double), intent(out) :: wrench(6)
    end subroutine be_wrench

    type(c_ptr) function be_modal_state_c(ep, k) bind(C, name="be_modal_state")
      import :: c_ptr, c_int
      type(c_ptr), value :: ep
      integer(c_int), intent(out) :: k
    end function be_modal_state_c

    !> The body's time, s.
    real(c_double) function be_time(ep) bind(C, name="be_time")
      import :: c_ptr, c_double
      type(c_ptr), value :: ep
    end function be_time
  end interface

contains

  !> The scheme (BE_*) of a coupling scheme's name, or -1 for one the examples do not run.
  integer function bef_scheme_of(name) result(scheme)
    character(len=*), intent(in) :: name
    scheme = int(be_scheme_of_c(trim(name) // c_null_char))
  end function bef_scheme_of

  !> Load the body file and set up (no stepping): the endpoint, or a null pointer with the reason
  !> in message (unreadable file, a body that is not grounded, H (s) or micro_steps (> 0:
  !> checked) not the file's).
  function bef_open(path, scheme, order, h, micro_steps, message) result(ep)
    character(len=*), intent(in) :: path
    integer, intent(in) :: scheme, order, micro_steps
    real(c_double), intent(in) :: h
    character(len=:), allocatable, intent(out) :: message
    type(c_ptr) :: ep
    character(kind=c_char) :: reason(4400)
    integer :: n
    reason = c_null_char
    ep = be_open_c(path // c_null_char, int(scheme, c_int), int(order, c_int), h, &
                   int(micro_steps, c_long), reason, int(size(reason), c_size_t))
    message = ""
    if (c_associated(ep)) return
    do n = 1, size(reason)
      if (reason(n) == c_null_char) exit
      message = message // reason(n)
    end do
  end function bef_open

  !> The modal interior state (Craig-Bampton, as rbcosim's FlexBody): k coordinates then k
  !> velocities, a pointer into the endpoint (valid until it steps or closes).
  function bef_modal_state(ep) result(state)
    type(c_ptr), intent(in) :: ep
    real(c_double), pointer :: state(:)
    type(c_ptr) :: p
    integer(c_int) :: k
    p = be_modal_state_c(ep, k)
    state => null()
    if (c_associated(p) .and. k > 0) call c_f_pointer(p, state, [2 * k])
  end function bef_modal_state

end module body_endpoint
